// Take one fact out of the KG. An entity stays; a literal's Value node goes
// when nothing else points to it (re-adding the fact creates it again).
MATCH (s:Entity {id: $s})-[r:$($r)]->(o)
WHERE o.id = $o AND (o:Entity OR o:Value)
DELETE r
WITH o
WHERE o:Value AND NOT EXISTS { (o)--() }
DELETE o
