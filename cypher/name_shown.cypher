// A name put in by a correction shows the entity when it has no name yet (a
// shown name stays: as when a correction makes an entity a load has named).
MATCH (s:Entity {id: $s})
SET s.name = coalesce(s.name, $name)
