// Forget the kept relation counts of a batch of entities (a correction
// changed their edges; counted again when needed).
UNWIND $ids AS id
MATCH (h:TogHub {id: id})
DELETE h
