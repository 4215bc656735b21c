// The degree of each of a batch of relationship types around each hub: one
// count per type and direction (out_counts / in_counts: hub_count_out /
// hub_count_in per type, joined by commas), each from Neo4j's degree store
// because the type is named in the text (see engine.queries.cypher_name).
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN id AS e, [{{out_counts}}] AS outs, [{{in_counts}}] AS ins
