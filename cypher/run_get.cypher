MATCH (r:TogRun {id: $id}) RETURN r {.*} AS run
