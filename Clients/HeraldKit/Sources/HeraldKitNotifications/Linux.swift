// HeraldKitNotifications adapts Apple's UserNotifications framework; where it does not exist
// (Linux, where Herald's tests run) the module is empty and apps use HeraldKit's core with their
// own `HeraldNotificationCenter`.
