MATCH (c:TogCorrection) RETURN c.record AS record ORDER BY c.created, c.id
