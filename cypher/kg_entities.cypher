MATCH (e:Entity) RETURN count(e) AS n
