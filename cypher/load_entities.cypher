UNWIND $ids AS id
MERGE (:Entity {id: id})
