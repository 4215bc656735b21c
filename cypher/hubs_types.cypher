// The relationship types and directions a batch of hubs' kept counts
// (hubs_save) name, read without hubs_get's check of the hub's degree (two
// degree-store sums over every type of a hub): for the look-ahead schema,
// a sample that a load's end clears and corrections keep up to date
// (refresh_hubs adds what they change to the counts in their transaction).
UNWIND $ids AS id
MATCH (h:TogHub {id: id})
RETURN id AS e, h.types AS types, h.dirs AS dirs
