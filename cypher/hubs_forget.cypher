// Forget the kept relation counts of a batch of entities whose edges moved
// outside a correction (the typed values' one-time rewrite merges Value
// nodes, which may swap one edge for another and keep their degrees), and
// move their correction counter, so that counts a question read before and
// keeps after are not used either.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e.tog_edits = coalesce(e.tog_edits, 0) + 1
WITH id
OPTIONAL MATCH (h:TogHub {id: id})
DELETE h
