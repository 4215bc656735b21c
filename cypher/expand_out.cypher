// At most $n objects of each [entity, relation, k] (k numbers the pairs),
// read lazily in the database's order: a crowded pair (more than $n - 1)
// is sampled instead (sample_out). The relationship type is a parameter
// (dynamic type), never query text.
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
CALL (e, pair) {
  MATCH (e)-[:$(pair[1])]->(x) WHERE x:Entity OR x:Value
  RETURN x LIMIT $n
}
RETURN pair[2] AS k, x.id AS x, x.name AS name, x:Value AS literal, x.value AS value, x.datatype AS datatype
