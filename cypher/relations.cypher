// KG relations around a batch of entities that are not hubs, in both
// directions, with their degrees (at most the hub threshold of edges each).
// Only Entity/Value neighbours count: run state (TogPath) never mixes in.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
CALL (e) {
  MATCH (e)-[r]->(x) WHERE x:Entity OR x:Value
  RETURN type(r) AS p, "out" AS dir, count(*) AS n
  UNION
  MATCH (e)<-[r]-(x:Entity)
  RETURN type(r) AS p, "in" AS dir, count(*) AS n
}
RETURN id AS e, p, dir, n
