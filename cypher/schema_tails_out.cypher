MATCH ()-[:{{type}}]->(n)
WITH n LIMIT $read
WITH n WHERE n:Entity
WITH DISTINCT n LIMIT $tails
RETURN {{i}} AS i, n.id AS n
