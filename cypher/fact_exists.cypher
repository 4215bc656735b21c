// Is (subject)-[relation]->(object) in the KG?  The object is an Entity or,
// when $literal, a Value; both ends are found by id first, so that the server
// looks for the edge from the end with fewer edges (matched from the subject
// alone, a hub's 150,000 edges were read whole), and the type is named in the
// text (engine.queries.cypher_name): as a parameter, the edges of every type
// of that end were read (a fact between two nodes of 50,000 edges: 50,012
// database hits against 11).
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (e:Entity {id: $o}) WHERE NOT $literal
OPTIONAL MATCH (v:Value {id: $o}) WHERE $literal
WITH s, coalesce(e, v) AS o
RETURN o IS NOT NULL AND EXISTS { (s)-[:{{type}}]->(o) } AS found
