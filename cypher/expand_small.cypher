// At most $n neighbours of each [entity, relationship type, direction, k]
// (k numbers the pairs) whose entity has at most $small edges in all, by
// one text for every type: the type is a parameter. Neo4j keeps such a
// node's edges in one chain whatever their type (it groups them by type
// only past db.relationship_grouping_threshold, 50 by default), so naming
// the type in the text (expand_out, expand_in) would read the same edges,
// and each new text costs the server 10-40 ms to plan: more than the read,
// and the texts of a KG with thousands of types overflow its plan cache.
// A bigger entity's pair comes back as one row, small = false and no
// neighbour, for the statements that name its type.
UNWIND $pairs AS pair
MATCH (e:Entity {id: pair[0]})
WITH pair, e, COUNT { (e)--() } <= $small AS small
OPTIONAL CALL (e, pair, small) {
  WITH e, pair, small WHERE small AND pair[2] = "out"
  MATCH (e)-[r]->(x) WHERE type(r) = pair[1] AND (x:Entity OR x:Value)
  RETURN x LIMIT $n
  UNION ALL
  WITH e, pair, small WHERE small AND pair[2] = "in"
  MATCH (e)<-[r]-(x:Entity) WHERE type(r) = pair[1]
  RETURN x LIMIT $n
}
RETURN pair[3] AS k, small, x.id AS x, x.name AS name, x:Value AS literal, x.value AS value, x.datatype AS datatype
