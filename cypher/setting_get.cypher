MATCH (s:TogSetting {key: $key}) RETURN s.value AS value
