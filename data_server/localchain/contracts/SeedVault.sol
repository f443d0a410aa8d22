// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IERC20Balance {
    function balanceOf(address owner) external view returns (uint256);
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @title SeedVault
/// @notice An ERC-4626 tokenized vault placed by the local chain's seeding step at the address
/// of a recorded vault. Its share price is what the vault's assets and shares make it: the
/// seeder sets the share balances and gives the vault the matching amount of the asset, so
/// `totalAssets() / totalSupply()` is the recorded price per share. Deposits and redemptions
/// work as in any ERC-4626 vault (no fees, rounding down as the standard asks).
contract SeedVault {
    /// @notice The only account allowed to configure the vault and set share balances.
    address public constant SEEDER = 0x1C7Bb1e1b221e15065f54E80b1052FEbdb086892;

    string public name;
    string public symbol;
    uint8 public decimals;
    address public asset;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares);
    event Withdraw(
        address indexed sender,
        address indexed receiver,
        address indexed owner,
        uint256 assets,
        uint256 shares
    );

    error NotSeeder();
    error InsufficientBalance();
    error InsufficientAllowance();
    error TransferFailed();

    modifier onlySeeder() {
        if (msg.sender != SEEDER) revert NotSeeder();
        _;
    }

    /// @notice Write the vault's metadata and underlying asset.
    function seedVault(
        address asset_,
        string calldata name_,
        string calldata symbol_,
        uint8 decimals_
    ) external onlySeeder {
        asset = asset_;
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    /// @notice Set `holder`'s share balance to `shares`, keeping `totalSupply` the sum.
    function seedBalance(address holder, uint256 shares) external onlySeeder {
        uint256 previous = balanceOf[holder];
        balanceOf[holder] = shares;
        totalSupply = totalSupply - previous + shares;
        if (shares > previous) emit Transfer(address(0), holder, shares - previous);
        if (previous > shares) emit Transfer(holder, address(0), previous - shares);
    }

    function totalAssets() public view returns (uint256) {
        return IERC20Balance(asset).balanceOf(address(this));
    }

    function convertToShares(uint256 assets) public view returns (uint256) {
        uint256 supply = totalSupply;
        uint256 managed = totalAssets();
        return supply == 0 || managed == 0 ? assets : assets * supply / managed;
    }

    function convertToAssets(uint256 shares) public view returns (uint256) {
        uint256 supply = totalSupply;
        return supply == 0 ? shares : shares * totalAssets() / supply;
    }

    function maxDeposit(address) external pure returns (uint256) {
        return type(uint256).max;
    }

    function maxRedeem(address owner) external view returns (uint256) {
        return balanceOf[owner];
    }

    function maxWithdraw(address owner) external view returns (uint256) {
        return convertToAssets(balanceOf[owner]);
    }

    function previewDeposit(uint256 assets) external view returns (uint256) {
        return convertToShares(assets);
    }

    function previewRedeem(uint256 shares) external view returns (uint256) {
        return convertToAssets(shares);
    }

    function deposit(uint256 assets, address receiver) external returns (uint256 shares) {
        shares = convertToShares(assets);
        if (!IERC20Balance(asset).transferFrom(msg.sender, address(this), assets)) {
            revert TransferFailed();
        }
        totalSupply += shares;
        balanceOf[receiver] += shares;
        emit Transfer(address(0), receiver, shares);
        emit Deposit(msg.sender, receiver, assets, shares);
    }

    function redeem(uint256 shares, address receiver, address owner)
        external
        returns (uint256 assets)
    {
        if (msg.sender != owner) _spendAllowance(owner, shares);
        assets = convertToAssets(shares);
        uint256 balance = balanceOf[owner];
        if (balance < shares) revert InsufficientBalance();
        balanceOf[owner] = balance - shares;
        totalSupply -= shares;
        emit Transfer(owner, address(0), shares);
        if (!IERC20Balance(asset).transfer(receiver, assets)) revert TransferFailed();
        emit Withdraw(msg.sender, receiver, owner, assets, shares);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spendAllowance(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _spendAllowance(address owner, uint256 amount) internal {
        uint256 allowed = allowance[owner][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert InsufficientAllowance();
            allowance[owner][msg.sender] = allowed - amount;
        }
    }

    function _move(address from, address to, uint256 amount) internal {
        uint256 balance = balanceOf[from];
        if (balance < amount) revert InsufficientBalance();
        balanceOf[from] = balance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
