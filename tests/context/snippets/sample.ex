defmodule Shop.Cart do
  alias Shop.Item

  def new(items) do
    %{items: items}
  end

  defp total(cart) do
    Enum.sum(cart.items)
  end
end
