// Which of $facts ({i, s, o, literal}) are in the KG, for one relationship
// type, named in the text as in fact_exists (whose comment says why: each end
// found by id, so that a hub's edges are not read whole).
UNWIND $facts AS f
MATCH (s:Entity {id: f.s})
OPTIONAL MATCH (e:Entity {id: f.o}) WHERE NOT f.literal
OPTIONAL MATCH (v:Value {id: f.o}) WHERE f.literal
WITH f, s, coalesce(e, v) AS o
WHERE o IS NOT NULL AND EXISTS { (s)-[:{{type}}]->(o) }
RETURN f.i AS i
