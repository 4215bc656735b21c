// Distinct KG relations around a batch of entities, in both directions.
// Only Entity/Value neighbours count: run state (TogPath) never mixes in.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
CALL (e) {
  MATCH (e)-[r]->(x) WHERE x:Entity OR x:Value
  RETURN DISTINCT type(r) AS p, "out" AS dir
  UNION
  MATCH (e)<-[r]-(x:Entity)
  RETURN DISTINCT type(r) AS p, "in" AS dir
}
RETURN id AS e, p, dir
