//! Device objects of a SYNC response: validation of what an integrator imports (or its
//! fulfilment returns) and the interface's one normalisation, `name.name` truncated to 60
//! Unicode code points without error.

use serde_json::Value;

/// Longest `DeviceNames.name`, in Unicode code points.
pub const MAX_NAME_CODE_POINTS: usize = 60;

/// Truncates to `MAX_NAME_CODE_POINTS` code points (not bytes, not UTF-16 units).
pub fn truncate_name(name: &str) -> String {
    name.chars().take(MAX_NAME_CODE_POINTS).collect()
}

fn expect(
    device: &Value,
    index: usize,
    field: &str,
    what: &str,
    ok: fn(&Value) -> bool,
) -> Result<(), String> {
    match device.get(field) {
        Some(value) if ok(value) => Ok(()),
        Some(_) => Err(format!("devices[{index}].{field}: must be {what}")),
        None => Ok(()),
    }
}

fn strings(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| items.iter().all(Value::is_string))
}

/// Validates one device and returns it with its name truncated; the error names the field.
pub fn validate_device(index: usize, device: &Value) -> Result<Value, String> {
    let Some(object) = device.as_object() else {
        return Err(format!("devices[{index}]: must be an object"));
    };
    for required in ["id", "type"] {
        match object.get(required) {
            Some(Value::String(text)) if !text.is_empty() => {}
            _ => {
                return Err(format!(
                    "devices[{index}].{required}: a non-empty string is required"
                ));
            }
        }
    }
    match object.get("traits") {
        Some(value) if strings(value) => {}
        _ => {
            return Err(format!(
                "devices[{index}].traits: an array of strings is required"
            ));
        }
    }
    let Some(names) = object.get("name").and_then(Value::as_object) else {
        return Err(format!(
            "devices[{index}].name: an object with a name is required"
        ));
    };
    match names.get("name") {
        Some(Value::String(_)) => {}
        _ => return Err(format!("devices[{index}].name.name: a string is required")),
    }
    for list in ["nicknames", "defaultNames"] {
        if names.get(list).is_some_and(|value| !strings(value)) {
            return Err(format!(
                "devices[{index}].name.{list}: must be an array of strings"
            ));
        }
    }
    expect(
        device,
        index,
        "willReportState",
        "a boolean",
        Value::is_boolean,
    )?;
    expect(
        device,
        index,
        "notificationSupportedByAgent",
        "a boolean",
        Value::is_boolean,
    )?;
    expect(device, index, "roomHint", "a string", Value::is_string)?;
    expect(device, index, "structureHint", "a string", Value::is_string)?;
    expect(device, index, "attributes", "an object", Value::is_object)?;
    expect(device, index, "customData", "an object", Value::is_object)?;
    if let Some(info) = object.get("deviceInfo") {
        let Some(info) = info.as_object() else {
            return Err(format!("devices[{index}].deviceInfo: must be an object"));
        };
        for field in ["manufacturer", "model", "hwVersion", "swVersion"] {
            if info.get(field).is_some_and(|value| !value.is_string()) {
                return Err(format!(
                    "devices[{index}].deviceInfo.{field}: must be a string"
                ));
            }
        }
    }
    if let Some(others) = object.get("otherDeviceIds") {
        let valid = others.as_array().is_some_and(|items| {
            items.iter().all(|item| {
                item.get("deviceId").is_some_and(Value::is_string)
                    && item.get("agentId").is_none_or(Value::is_string)
            })
        });
        if !valid {
            return Err(format!(
                "devices[{index}].otherDeviceIds: must be an array of {{agentId, deviceId}} strings"
            ));
        }
    }
    let mut device = device.clone();
    if let Some(Value::String(name)) = device.pointer_mut("/name/name") {
        *name = truncate_name(name);
    }
    Ok(device)
}

/// Reads devices from a SYNC response (`{"payload":{"devices":[…]}}`), a payload
/// (`{"devices":[…]}`) or a bare array; validates each; refuses duplicate ids.
pub fn devices_from(document: &Value) -> Result<Vec<Value>, String> {
    let list = document
        .pointer("/payload/devices")
        .or_else(|| document.get("devices"))
        .unwrap_or(document);
    let Some(items) = list.as_array() else {
        return Err(
            "devices: expected an array, a {\"devices\": [...]} object or a SYNC response"
                .to_owned(),
        );
    };
    let mut seen = std::collections::HashSet::new();
    let mut devices = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let device = validate_device(index, item)?;
        let id = device["id"].as_str().unwrap_or_default().to_owned();
        if !seen.insert(id.clone()) {
            return Err(format!("devices[{index}].id: {id:?} appears twice"));
        }
        devices.push(device);
    }
    Ok(devices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_cut_at_60_code_points() {
        let astral = "🏠".repeat(61);
        assert_eq!(truncate_name(&astral).chars().count(), 60);
        assert_eq!(
            truncate_name(&astral).len(),
            240,
            "four bytes each, none split"
        );
        let combining = "é".repeat(70);
        assert_eq!(truncate_name(&combining).chars().count(), 60);
        assert_eq!(truncate_name("short"), "short");
    }

    #[test]
    fn validation_names_the_wrong_field() {
        let good = json!({"id": "a", "type": "t", "traits": ["x"], "name": {"name": "n"}});
        assert!(devices_from(&json!([good.clone()])).is_ok());
        assert!(devices_from(&json!({"payload": {"devices": [good.clone()]}})).is_ok());
        for (device, field) in [
            (
                json!({"type": "t", "traits": [], "name": {"name": "n"}}),
                "devices[0].id",
            ),
            (
                json!({"id": "a", "type": "t", "traits": "x", "name": {"name": "n"}}),
                "devices[0].traits",
            ),
            (
                json!({"id": "a", "type": "t", "traits": [], "name": {"name": 3}}),
                "devices[0].name.name",
            ),
            (
                json!({"id": "a", "type": "t", "traits": [], "name": {"name": "n"}, "willReportState": "yes"}),
                "devices[0].willReportState",
            ),
            (
                json!({"id": "a", "type": "t", "traits": [], "name": {"name": "n"}, "deviceInfo": {"model": 1}}),
                "devices[0].deviceInfo.model",
            ),
        ] {
            let error = devices_from(&json!([device])).unwrap_err();
            assert!(error.starts_with(field), "{error}");
        }
        let error = devices_from(&json!([good.clone(), good])).unwrap_err();
        assert!(error.contains("appears twice"), "{error}");
    }
}
