// A bounded sample of the nodes each of a batch of [relation, direction, k]
// leads to: the relations around them are what can follow it. At most
// $tails of them, found among the relation's first $read edges (a relation
// whose edges mostly reach one hub gives fewer tails, never a longer
// read). The type is a parameter; the LIMITs keep the read bounded.
UNWIND $relations AS rel
CALL (rel) {
  WITH rel WHERE rel[1] = "out"
  MATCH (:Entity)-[:$(rel[0])]->(n:Entity)
  WITH n LIMIT $read
  WITH DISTINCT n LIMIT $tails
  RETURN n.id AS n
  UNION
  WITH rel WHERE rel[1] = "in"
  MATCH (n:Entity)-[:$(rel[0])]->(:Entity)
  WITH n LIMIT $read
  WITH DISTINCT n LIMIT $tails
  RETURN n.id AS n
}
RETURN rel[2] AS k, n
