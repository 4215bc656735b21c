// Take one fact out of the KG. An entity stays; a literal's Value node goes
// when nothing else points to it (re-adding the fact creates it again). Both
// ends are found by id first, as in fact_exists, so that a hub's edges are not
// read to find one, and the type is named in the text.
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (e:Entity {id: $o}) WHERE NOT $literal
OPTIONAL MATCH (v:Value {id: $o}) WHERE $literal
WITH s, coalesce(e, v) AS o
MATCH (s)-[r:{{type}}]->(o)
DELETE r
WITH o
WHERE o:Value AND NOT EXISTS { (o)--() }
DELETE o
