// A reverted correction takes out the entity it made: its linking key, then
// the node itself (and the correction records' ABOUT links to it) unless a KG
// fact still touches it (then its name stays). The key is looked up by
// entity, never by key (load_name_keys.cypher says why).
OPTIONAL MATCH (n:TogName {entity: $id}) USING INDEX n:TogName(entity)
WHERE n.key = $key AND n.source = $source
DELETE n
WITH count(*) AS dropped
MATCH (e:Entity {id: $id})
WHERE NOT EXISTS { (e)--(:Entity) } AND NOT EXISTS { (e)-->(:Value) }
DETACH DELETE e
