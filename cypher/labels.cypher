// Names of a batch of entities.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WHERE e.name IS NOT NULL
RETURN id, e.name AS name
