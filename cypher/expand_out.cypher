// At most $n objects of each [entity, k] (k numbers the pairs) by one
// relationship type, read lazily in the database's order: a crowded pair
// (more than $n - 1) is sampled instead (sample_out). The type is named in
// the text (engine.queries.cypher_name), so that Neo4j follows that type's
// edges only: given as a parameter, it read every edge of the node and kept
// the type's (449,022 database hits for a pair of 297 edges of a hub).
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
CALL (e) {
  MATCH (e)-[:{{type}}]->(x) WHERE x:Entity OR x:Value
  RETURN x LIMIT $n
}
RETURN pair[1] AS k, x.id AS x, x.name AS name, x:Value AS literal, x.value AS value, x.datatype AS datatype
