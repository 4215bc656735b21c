// Relations around a sample of the subjects of $relation: what can follow an
// in-edge $relation one hop further.
MATCH (n:Entity)-[:$($relation)]->()
WITH DISTINCT n LIMIT 50
CALL (n) {
  MATCH (n)-[r]->(x) WHERE x:Entity OR x:Value
  RETURN DISTINCT type(r) AS q, "out" AS dir
  UNION
  MATCH (n)<-[r]-(x:Entity)
  RETURN DISTINCT type(r) AS q, "in" AS dir
}
RETURN DISTINCT q, dir
