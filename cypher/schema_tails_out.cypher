MATCH (:Entity)-[:{{type}}]->(n:Entity)
WITH n LIMIT $read
WITH DISTINCT n LIMIT $tails
RETURN {{i}} AS i, n.id AS n
