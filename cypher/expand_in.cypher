// At most $n subjects of each [entity, k] (in-edges); see expand_out.
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
CALL (e) {
  MATCH (e)<-[:{{type}}]-(x:Entity)
  RETURN x LIMIT $n
}
RETURN pair[1] AS k, x.id AS x, x.name AS name, false AS literal, null AS value, null AS datatype
