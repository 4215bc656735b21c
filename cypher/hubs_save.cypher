// Keep the relation counts of a batch of hubs ([id, types, directions,
// degrees, degree out, degree in, correction counter] rows), counted per
// type from the degree store (hub_relations) or moved by a correction
// (hubs_touch); hubs_get checks the rest.
UNWIND $rows AS row
MERGE (h:TogHub {id: row[0]})
SET h.types = row[1], h.dirs = row[2], h.n = row[3], h.out = row[4], h.in = row[5], h.edits = row[6]
