// Inside a correction's transaction, after its facts changed: move the
// correction counter of each entity it touched (which holds the entity's
// lock until the correction commits, so two corrections of one hub take
// turns), and return the hub's kept counts with whether they were current
// (counted since the last correction: the counter hubs_get checks). The
// correction adds its changes to current ones (hubs_save) and drops the others.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WITH id, e, coalesce(e.tog_edits, 0) AS edits
SET e.tog_edits = edits + 1
WITH id, edits
MATCH (h:TogHub {id: id})
RETURN id AS e, h.edits = edits AS current, edits + 1 AS edits, h.types AS types, h.dirs AS dirs, h.n AS n,
       h.out AS out, h.in AS in
