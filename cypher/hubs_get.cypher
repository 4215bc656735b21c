// The kept relation counts of a batch of hubs (hubs_save): parallel lists
// of relationship types, directions and degrees, for the hubs whose KG
// degree each way (kg_degree, from the degree store: not the run state's AT
// edges nor the corrections' ABOUT edges) is still what the
// counts add up to, and that no correction touched since they were counted
// (the counter hubs_touch moves); any other is counted again.
UNWIND $ids AS id
MATCH (h:TogHub {id: id})
MATCH (e:Entity {id: id})
WITH id, h, e, {{degree}}
WHERE h.out = out AND h.in = in AND h.edits = coalesce(e.tog_edits, 0)
RETURN id AS e, h.types AS types, h.dirs AS dirs, h.n AS n
