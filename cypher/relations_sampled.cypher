// What the first $edges edges in each direction show of each of a batch of
// entities (the look-ahead's sampled tails: a sample of samples), for the
// entities with at most $hub edges in each direction; a hub comes back with
// hub = true and no relations, to be counted per type (hub_relations), as
// in relations.cypher. Reads at most 2 x $edges edges an entity.
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
