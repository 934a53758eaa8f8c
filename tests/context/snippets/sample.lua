local json = require("json")

local Cart = {}

function Cart.new(items)
  return setmetatable({ items = items }, { __index = Cart })
end

function Cart:total()
  local t = 0
  return t
end

local function helper(x)
  return x * 2
end

return Cart
