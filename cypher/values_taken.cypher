// Which of these value ids name a node already.
UNWIND $ids AS id
MATCH (v:Value {id: id})
RETURN v.id AS id
