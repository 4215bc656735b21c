// A correction changed an entity's names: it is shown by $name (of rank $rank;
// null: by its IRI), keeps $before (of rank $before_rank) aside, and its
// linking keys $keys go (those no name of it has any more). Keys are looked up
// by entity, never by key (load_name_keys.cypher says why).
MATCH (s:Entity {id: $s})
SET s.name = $name, s.name_rank = $rank, s.tog_name_before = $before, s.tog_rank_before = $before_rank
WITH s
OPTIONAL MATCH (n:TogName {entity: $s}) USING INDEX n:TogName(entity)
WHERE n.key IN $keys
DELETE n
