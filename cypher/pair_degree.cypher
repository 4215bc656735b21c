// The degree of one (entity, relation) pair in both directions, from the
// degree store (the type is named in the text, see engine.queries.cypher_name).
MATCH (e:Entity {id: $e})
RETURN COUNT { (e)-[:{{type}}]->() } AS out, COUNT { (e)<-[:{{type}}]-() } AS in
