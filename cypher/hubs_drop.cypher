// Inside a correction's transaction: drop the kept counts of a batch of hubs
// that were not current (hubs_touch); the next listing counts them again.
UNWIND $ids AS id
MATCH (h:TogHub {id: id})
DELETE h
