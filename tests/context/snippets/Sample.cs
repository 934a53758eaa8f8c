using System;

namespace Shop
{
    public interface IPriced
    {
        decimal Price();
    }

    public class Item : IPriced
    {
        public string Name { get; set; }

        public decimal Price()
        {
            return 1.0m;
        }
    }

    public enum Kind { Food, Tool }
}
