// Edges of each entity of a batch in each direction (Neo4j counts these
// from its degree store for a dense node): an entity with more than the
// hub threshold has its relations counted per type (hub_relations), the
// others are listed by their edges (relations).
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN id AS e, COUNT { (e)-->() } AS out, COUNT { (e)<--() } AS in
