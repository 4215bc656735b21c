// Drop the kept counts of a batch of hubs: in a correction's transaction,
// those that were not current (hubs_touch); after the typed values' one-time
// rewrite, which merges Value nodes, those of the subjects whose edges moved.
// The next listing counts them again.
UNWIND $ids AS id
MATCH (h:TogHub {id: id})
DELETE h
