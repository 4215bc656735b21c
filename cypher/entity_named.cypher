// A correction makes an entity: the node, its name (of rank $rank: a label's)
// and its linking key (none for a name longer than anyone types), tagged with
// the correction, so a revert finds exactly these. The key is looked up by
// entity, never by key (load_name_keys.cypher says why).
MERGE (e:Entity {id: $id})
  ON CREATE SET e.sk = $sk
SET e.name_rank = CASE WHEN e.name IS NULL THEN $rank ELSE e.name_rank END, e.name = coalesce(e.name, $name)
WITH e
OPTIONAL MATCH (n:TogName {entity: $id}) USING INDEX n:TogName(entity)
WHERE n.key = $key
WITH count(n) AS found WHERE found = 0 AND $key IS NOT NULL
CREATE (:TogName {key: $key, entity: $id, source: $source})
