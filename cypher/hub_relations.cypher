// The degree of each of a batch of relationship types around each hub: one
// count per type and direction (out_counts / in_counts: hub_count_out /
// hub_count_in per type, joined by commas), each from Neo4j's degree store
// because the type is named in the text (see engine.queries.cypher_name).
// With the hub's KG degree each way, which the counts must add up to
// (kg_degree: not the run state's AT edges nor the corrections' ABOUT
// edges), and its correction counter (hubs_touch), both read before the counts.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WITH id, e, coalesce(e.tog_edits, 0) AS edits, {{degree}}
RETURN id AS e, edits, out, in, [{{out_counts}}] AS outs, [{{in_counts}}] AS ins
