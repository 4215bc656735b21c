// KG relations around a batch of entities, in both directions, with their
// degrees, for the entities with at most $hub edges in each direction; a
// hub (its degrees from Neo4j's degree store say so) comes back with
// hub = true and no relations: they are counted per type instead
// (hub_relations). What the first $edges edges each way show: $hub or more
// lists an entity whole, fewer samples it (the look-ahead's tails). Only
// Entity/Value neighbours count: run state (TogPath) never mixes in.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WITH id, e, COUNT { (e)-->() } > $hub OR COUNT { (e)<--() } > $hub AS hub
OPTIONAL CALL (e, hub) {
  WITH e, hub WHERE NOT hub
  MATCH (e)-[r]->(x) WHERE x:Entity OR x:Value
  WITH r LIMIT $edges
  RETURN type(r) AS p, "out" AS dir, count(*) AS n
  UNION
  WITH e, hub WHERE NOT hub
  MATCH (e)<-[r]-(x:Entity)
  WITH r LIMIT $edges
  RETURN type(r) AS p, "in" AS dir, count(*) AS n
}
RETURN id AS e, hub, p, dir, n
