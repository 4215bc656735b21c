MERGE (s:TogSetting {key: $key}) SET s.value = $value
