CALL db.info() YIELD id RETURN id
