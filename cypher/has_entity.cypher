MATCH (e:Entity {id: $id}) RETURN count(e) > 0 AS found
