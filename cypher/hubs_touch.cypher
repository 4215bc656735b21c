// Inside a correction's transaction, after its facts changed: move the
// correction counter of each entity it touched, and return the hub's kept
// counts with whether they were current (counted since the last correction:
// the counter hubs_get checks). The correction adds its changes to current
// ones (hubs_save) and drops the others. The counter is moved before it is
// read (a SET that reads the property itself locks the node first; an edge
// deleted from a dense node does not), so the entity stays locked until the
// correction commits and two corrections of one hub take turns (read first,
// then set: of two reverts of one hub at once, one move was lost).
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e.tog_edits = coalesce(e.tog_edits, 0) + 1
WITH id, e.tog_edits AS edits
MATCH (h:TogHub {id: id})
RETURN id AS e, h.edits = edits - 1 AS current, edits, h.types AS types, h.dirs AS dirs, h.n AS n,
       h.out AS out, h.in AS in
