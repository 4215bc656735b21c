// Take one fact out of the KG (its nodes stay).
MATCH (s:Entity {id: $s})-[r:$($r)]->(o)
WHERE o.id = $o AND (o:Entity OR o:Value)
DELETE r
