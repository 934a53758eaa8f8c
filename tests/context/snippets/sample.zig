const std = @import("std");

const Point = struct {
    x: i32,
    y: i32,

    pub fn add(self: Point, other: Point) Point {
        return .{ .x = self.x + other.x, .y = self.y + other.y };
    }
};

pub fn main() void {
    std.debug.print("hi\n", .{});
}

fn helper(x: i32) i32 {
    return x * 2;
}
