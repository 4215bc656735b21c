// The names an entity has as edges (those corrections put in), by the name
// predicates named in the text: [type, text, language] rows, and its shown name.
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (s)-[r:{{types}}]->(v:Value)
RETURN s.name AS shown, [x IN collect([type(r), v.value, v.lang]) WHERE x[0] IS NOT NULL] AS names
