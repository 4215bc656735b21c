// Inside a correction's transaction: forget the kept relation counts of a
// batch of entities it touches (it may swap one edge for another, which
// keeps their degrees), and move their correction counter, so that counts
// a question read before the correction and keeps after it are not used.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e.tog_edits = coalesce(e.tog_edits, 0) + 1
WITH id
OPTIONAL MATCH (h:TogHub {id: id})
DELETE h
