// A name taken out: the entity is shown by $next instead when $unshow (it was
// shown by that name; $next null: by its IRI), and its linking keys $keys go
// (those no name of the entity has any more). Keys are looked up by entity
// (load_name_keys.cypher says why).
MATCH (s:Entity {id: $s})
CALL (s) {
  WITH s WHERE $unshow
  SET s.name = $next
  REMOVE s.name_rank
}
WITH s
OPTIONAL MATCH (n:TogName {entity: $s}) USING INDEX n:TogName(entity)
WHERE n.key IN $keys
DELETE n
