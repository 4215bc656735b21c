// Is (subject)-[relation]->(object) in the KG?  The object is an Entity or,
// when $literal, a Value; both found by id.
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (s)-[r:$($r)]->(o:Entity {id: $o}) WHERE NOT $literal
OPTIONAL MATCH (s)-[v:$($r)]->(w:Value {id: $o}) WHERE $literal
RETURN count(r) + count(v) > 0 AS found
