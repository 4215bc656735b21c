// At most $n neighbours of each [entity, direction, k] (k numbers the
// pairs) by one relationship type, either way: objects (entities or
// values) out, subjects (entities) in; read lazily in the database's
// order: a crowded pair (more than $n - 1) is sampled instead (sample_out,
// sample_in). The type is named in the text (engine.queries.cypher_name),
// so that Neo4j follows that type's edges only: given as a parameter, it
// read every edge of the node and kept the type's (449,022 database hits
// for a pair of 297 edges of a hub). One text serves both directions: the
// server plans each new text (10-40 ms) and keeps a bounded number, and a
// run follows many types both ways (300 questions at 10M triples sent 440
// texts, where a text per type and direction made 763).
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
CALL (e, pair) {
  WITH e, pair WHERE pair[1] = "out"
  MATCH (e)-[:{{type}}]->(x) WHERE x:Entity OR x:Value
  RETURN x LIMIT $n
  UNION ALL
  WITH e, pair WHERE pair[1] = "in"
  MATCH (e)<-[:{{type}}]-(x:Entity)
  RETURN x LIMIT $n
}
RETURN pair[2] AS k, x.id AS x, x.name AS name, x:Value AS literal, x.value AS value, x.datatype AS datatype
