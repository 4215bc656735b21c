// Is (subject)-[relation]->(object) in the KG?  The object is an Entity or,
// when $literal, a Value; both ends are found by id first, so that the server
// looks for the edge from the end with fewer edges (matched from the subject
// alone, a hub's 150,000 edges were read whole).
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (e:Entity {id: $o}) WHERE NOT $literal
OPTIONAL MATCH (v:Value {id: $o}) WHERE $literal
WITH s, coalesce(e, v) AS o
RETURN o IS NOT NULL AND EXISTS { (s)-[:$($r)]->(o) } AS found
