// A bounded sample of the nodes each of a batch of [relation, direction, k]
// leads to: the relations around them are what can follow it. The type is
// a parameter; the LIMIT keeps the read bounded.
UNWIND $relations AS rel
CALL (rel) {
  WITH rel WHERE rel[1] = "out"
  MATCH (:Entity)-[:$(rel[0])]->(n:Entity)
  WITH DISTINCT n LIMIT $tails
  RETURN n.id AS n
  UNION
  WITH rel WHERE rel[1] = "in"
  MATCH (n:Entity)-[:$(rel[0])]->(:Entity)
  WITH DISTINCT n LIMIT $tails
  RETURN n.id AS n
}
RETURN rel[2] AS k, n
